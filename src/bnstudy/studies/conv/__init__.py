"""Studies 1 and 2 on the small convolutional network, beside the MLP."""
