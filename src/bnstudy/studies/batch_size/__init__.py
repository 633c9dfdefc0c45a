"""Study 2: accuracy by training batch size in both modes, paired comparisons, and the remedies."""
