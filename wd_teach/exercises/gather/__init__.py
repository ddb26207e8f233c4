"""Gather (lesson 05): agents on a line, each rewarded for being near its group's centre."""
