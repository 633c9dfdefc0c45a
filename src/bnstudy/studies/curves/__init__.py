"""Training curves: every grid network's validation accuracy after each epoch, whether each cell
finished training, and the test accuracies beside the data set's published baselines."""
