#!/bin/sh
# postinst of @PACKAGE@ @VERSION@: aicluster lab stand-in (lab/mirror/build.py). As NVIDIA's 1.18 package does:
# where systemd runs (running or degraded), reload it, enable and start nvidia-cdi-refresh.path and .service, and
# regenerate the CDI spec now, on install and on upgrade; a failure is a warning, never a failed install.
set -e
case "$1" in
    configure)
        if command -v systemctl >/dev/null 2>&1; then
            state=$(systemctl is-system-running 2>/dev/null || true)
            case "$state" in
                running|degraded)
                    systemctl daemon-reload || echo "Warning: Failed to reload systemd daemon" >&2
                    systemctl enable --now nvidia-cdi-refresh.path || echo "Warning: Failed to enable nvidia-cdi-refresh.path" >&2
                    systemctl enable --now nvidia-cdi-refresh.service || echo "Warning: Failed to enable nvidia-cdi-refresh.service" >&2
                    echo "Regenerating NVIDIA CDI specification..."
                    systemctl start nvidia-cdi-refresh.service || echo "Warning: Failed to trigger CDI refresh" >&2
                    ;;
            esac
        fi
        ;;
esac
exit 0
