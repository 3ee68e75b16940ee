#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The trivial test of ci/vm/soak.sh: the guest reached its test. Nothing else
# to check: the soak counts boots, not tests.
echo "soak: $(uname -r) reached the test, up $(cut -d' ' -f1 /proc/uptime) s"
exit 0
