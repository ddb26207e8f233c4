"""Speaker and listener: two roles that see different things and must talk to score."""

from wd_teach_envs.speaker_listener.env import SpeakerListener, SpeakerListenerConfig

__all__ = ["SpeakerListener", "SpeakerListenerConfig"]
