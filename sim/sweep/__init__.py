"""Design-space sweeps on Dask (issue 42): a plan of points (:mod:`.plan`), the library call of each point
(:mod:`.points`), the SQLite results store (:mod:`.store`), the Dask runner (:mod:`.runner`) and the
standard plots (:mod:`.plots`). docs/sweeps.md is the user's guide."""
