"""Batch renorm's ramp: the grid's batch-renorm networks retrained with other schedules of the limits
``rmax`` and ``dmax`` (Ioffe's own, in steps; the limits from the first step; the grid's ramp slower and
faster), each set against the grid's batch norm and batch renorm of the same seeds: design
(:mod:`.design`), science (:mod:`.science`), report (:mod:`.report`), config check (:mod:`.checks`),
cost (:mod:`.cost`)."""
