"""The driver: owns *when* things run — the backend scheduler, drives, generations, tellask execution."""
