"""Which CANN a run uses (discovery, the software-CANN fallback, the re-exec with
set_env.sh), decided before any library loads."""
