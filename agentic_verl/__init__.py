"""agentic_verl: multi-turn, tool-using agent RL on stock verl, as a plugin.

Importing this package is cheap and imports nothing from verl; `agentic_verl.plugin` is what
verl loads (through the `verl.plugins` entry point) to register our components.
"""

__version__ = "0.1.0"

# The verl release this package is built and tested against (checked by `agentic-verl doctor`).
SUPPORTED_VERL_VERSION = "0.9.1"
