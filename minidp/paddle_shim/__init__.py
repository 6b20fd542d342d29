"""A directory to put on ``sys.path`` (``PYTHONPATH``), not a package to import: its module
``paddle`` makes the process it is imported in import ``paddle`` as minidp
(:mod:`minidp.paddle_alias`). ``python -m minidp.run`` puts it on the path of the script and of
every Python process the script starts, so that its children see the alias too."""
