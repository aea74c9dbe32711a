import CAllocCounter
print("codec benchmark: not yet written, allocations so far \(fb_alloc_count())")
