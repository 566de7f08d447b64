//! A fake kernel (next commit).
