"""Runs Flower (mher/flower from a source checkout on PYTHONPATH) as
`celery --broker=B flower ...` would, for bench/dashboard.ts: the checkout has
no installed entry point, so its click command is added to Celery's by hand.
"""
import sys

from celery.bin.celery import celery
from flower.command import flower

celery.add_command(flower)
sys.exit(celery.main(sys.argv[1:]))
