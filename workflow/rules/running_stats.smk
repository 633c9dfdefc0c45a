# Studies 3 and 5: running statistics on an enumerated population, and what tests can see.
