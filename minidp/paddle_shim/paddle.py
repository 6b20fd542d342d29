"""``import paddle`` in a process that ``python -m minidp.run`` started, directly or not: installs
the alias and hands the name ``paddle`` over to the ``minidp`` package itself.

The import system returns what ``sys.modules`` holds under the name once the module has run, so
the importer receives ``minidp``; its submodules then come through the alias's finder.
"""

import sys

import minidp
from minidp.paddle_alias import install

install()
sys.modules[__name__] = minidp
