"""Side by side: this build's headline numbers beside those of other builds, each read from the
macro files its own pipeline wrote and checked against a manifest first: the numbers
(:mod:`.report`), the config check (:mod:`.checks`)."""
