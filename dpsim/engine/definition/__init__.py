"""What an experiment is: the axis vocabulary (``axes``) and the definition types with grid expansion (``grid``)."""
