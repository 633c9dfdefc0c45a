"""The paper's shared parts: the figures' house style, LaTeX macros and tables, the Methods'
design macros, and the reproducible pdfTeX build."""
