"""A sweep's figures: the points' results read back and put in rows (results), the statistics
(stats: intervals and tests), the winner or tie of a cell (decision) and the figures per source
(sources).

May import: sweep.store, sweep.config, sweep.layout.
"""
