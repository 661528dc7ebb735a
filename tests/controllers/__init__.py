"""Tests of controllers/."""
