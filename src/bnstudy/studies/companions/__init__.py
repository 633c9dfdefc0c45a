"""Study 1: how a training-mode prediction depends on its batch companions (both protocols)."""
