"""The trajectory-level replay of a plan (MODEL.md §10): setup (capacities), engine (one replication),
sandbox (the FIFO queue), summary (its figures), report (beside the model's), runner (replications), trace."""
