"""The study folder: parts and manifest (``store``, ``parts``), code fingerprints (``provenance``), joining
folders (``merge``) and their inspection and repair (``folder``)."""
