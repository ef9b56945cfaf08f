"""The command-line programs (t2t-datagen, t2t-train, ...): absl flags -> one library call.

Installed as console scripts (setup.py), so an editable install runs the
code as it is now; bin/ holds launchers that run the same modules from a
checkout. Importing this package sets TensorFlow's C++ log level before any
program imports TensorFlow: start-up chatter is hidden (TF_CPP_MIN_LOG_LEVEL=0
shows it).
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
