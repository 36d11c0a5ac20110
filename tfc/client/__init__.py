"""Running compiled programs: Session, staged host/GPU programs, run requests, options."""
