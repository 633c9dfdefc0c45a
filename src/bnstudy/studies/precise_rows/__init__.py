"""How many training rows a recomputation of batch norm's population statistics needs: science
(:mod:`.science`), report (:mod:`.report`), figure (:mod:`.figure`), config check (:mod:`.checks`)."""
