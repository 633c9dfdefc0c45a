"""Networks and training: the data split, the models' weights and recipes, training runs through
the compiled loop, weights files, and the PyTorch forms (the independent references the tests
compare the compiled arithmetic with)."""
