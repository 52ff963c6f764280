"""Reports: immutable, versioned tier reports and their public renderings."""
