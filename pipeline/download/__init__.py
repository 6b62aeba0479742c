"""Image download: the sampled images fetched with img2dataset behind URL, size and pixel
guards, with failures backfilled from each class's reserve (see `stage`)."""
