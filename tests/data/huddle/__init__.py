"""Huddle: agents on a line, each rewarded for staying close to the centre of its group."""
