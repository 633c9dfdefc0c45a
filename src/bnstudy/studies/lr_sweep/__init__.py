"""Study 2 with Adam's learning rate tuned at every batch size."""
