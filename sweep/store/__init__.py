"""What a sweep keeps: where its files are read and written (sweep.layout beside it), a point's
records fetched from a host (record), the store of measurements by identity that a later sweep
reuses (store), failed starts, what they rule out and the verdicts kept (failures), which host
runs which point (claims), the progress log (progress), the greedy-output check's answers
(greedy) and the bench's wheelhouse, whose hash is part of every identity (wheelhouse).

May import: sweep.config, sweep.layout.
"""
