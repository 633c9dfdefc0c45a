# Study 1: companion dependence of training-mode predictions (see issue: companion study).
