"""Roofline calibrations fitted on public GPU times (`batchmark sim calibrate`); data, shipped with the package."""
