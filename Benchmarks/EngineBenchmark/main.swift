print("engine benchmark: not yet written")
