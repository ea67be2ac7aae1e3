"""`needle tune`: fit the hybrid fusion (mix curve or RRF k) on a training split and install it on the index."""
