"""No models: the demo only orchestrates the other apps' services.

The module exists on purpose. Django sends ``post_migrate`` only to apps with a models
module, and ``reviews`` resets its role groups' permissions when the *last* installed app
receives that signal; quickstart is installed last, so it must have one.
"""
