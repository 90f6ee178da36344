#!/bin/sh
# Greedy text from a checkpoint directory with the command line.
staticlm run -m "$1" -p "Why is the sky blue?" -n 8 --temp 0 --max-seq 256
