"""InfiniBand link arithmetic shared by every stand-in: widths, lane speeds, rates.

Lane speeds are the per-lane signalling rates iblinkinfo prints
(``106.25 Gbps``); rates are what the kernel reports in sysfs and ibstat
prints (``Rate: 400``): lanes x the nominal data rate of the speed class.
"""

# lane speed (Gb/s, as iblinkinfo prints it) -> (speed class name, nominal Gb/s per lane)
LANE_SPEEDS = {
    2.5: ('SDR', 2.5),
    5.0: ('DDR', 5.0),
    10.0: ('QDR', 10.0),
    14.0625: ('FDR', 14.0),
    25.78125: ('EDR', 25.0),
    53.125: ('HDR', 50.0),
    106.25: ('NDR', 100.0),
    212.5: ('XDR', 200.0),
}
WIDTHS = ('1X', '2X', '4X', '8X', '12X')

# What a port reports while its link is down (mlx5: SDR 4X on InfiniBand, QDR 4X on Ethernet).
DOWN_LINK = {
    'InfiniBand': {'width': '4X', 'lane_speed_gbps': 2.5, 'physical_state': 'Polling'},
    'Ethernet': {'width': '4X', 'lane_speed_gbps': 10.0, 'physical_state': 'Disabled'},
}


def lanes(width):
    """``'4X'`` -> 4."""
    return int(str(width).rstrip('Xx'))


def lane_speed(value):
    """Normalise a lane speed given as text or number to a key of LANE_SPEEDS; ValueError otherwise."""
    speed = float(value)
    for known in LANE_SPEEDS:
        if abs(known - speed) < 1e-6:
            return known
    raise ValueError('unknown lane speed %s; allowed: %s' % (value, ', '.join(format_speed(s) for s in sorted(LANE_SPEEDS))))


def format_speed(speed):
    """``106.25`` -> ``'106.25'``, ``10.0`` -> ``'10.0'`` (libibmad's spelling)."""
    text = ('%f' % speed).rstrip('0')
    return text + '0' if text.endswith('.') else text


def rate(width, speed):
    """Kernel/ibstat rate in Gb/s: 4X NDR -> 400, 1X SDR -> 2.5 (float only when fractional)."""
    value = lanes(width) * LANE_SPEEDS[lane_speed(speed)][1]
    return int(value) if value == int(value) else value


def rate_text(width, speed):
    """The sysfs ``rate`` file / ibstatus spelling: ``400 Gb/sec (4X NDR)``; SDR has no name (``10 Gb/sec (4X)``)."""
    value = rate(width, speed)
    name = LANE_SPEEDS[lane_speed(speed)][0]
    return '%s Gb/sec (%s%s)' % (value, width, '' if name == 'SDR' else ' ' + name)
