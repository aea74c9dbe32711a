print("metrics benchmark: not yet written")
