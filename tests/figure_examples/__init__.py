"""Each study's figures drawn from small fixed inputs shaped as the pipeline's tables, one module a
study (named as the study in bnstudy.base.catalogue), each with ``figure(name)`` for every figure the
study prints: tests/paper/test_figures.py's ``build`` finds a figure's module from the catalogue, so a new
study brings its own examples and edits no test."""
