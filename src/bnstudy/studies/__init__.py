"""One folder per study: its science (``science``), its report (summary JSON, macros, LaTeX
tables: ``report``/``summary``/``macros``) and its figure (``figure``)."""
