"""lysep: reproduce and extend the LySep paper (Liu & Gu)."""
