"""Training curves: every grid network's validation accuracy after each epoch (without a validation
split: its training loss and training accuracy, :mod:`.training`), whether each cell finished
training, and the test accuracies beside the data set's published baselines."""
