"""The model search beside the grid: its rule (model_search) and its model (gaussian_process), the
rounds' state and cost against the grid (search_state), the grid's axes (grid_axes), the memory fit
(memory), and the driver that replays it from the sweep's records (search_rounds).

May import: sweep.results, sweep.store, sweep.config, sweep.layout.
"""
