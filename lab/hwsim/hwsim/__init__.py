"""hwsim: simulated GPU/InfiniBand hardware tools for the aicluster.infra container lab.

Test equipment only: the collection's roles never install it.  See ../README.md.
"""
