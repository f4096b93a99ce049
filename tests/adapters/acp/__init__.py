"""The stdio agent driven end to end through the ACP adapter: the real process, real pipes."""
