"""The sample stage: each class's images (and reserve) picked from its scored captions."""
