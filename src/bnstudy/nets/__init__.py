"""Networks and training: the normalisers' registry, the data sets and their split, the
models' weights and recipes, training runs through the compiled loop, and the PyTorch forms
(the independent references the tests compare the compiled arithmetic with)."""
