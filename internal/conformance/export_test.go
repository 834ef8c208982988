package conformance

// RunWeirRestartingAt is RunWeir restarting the driver before each input
// i for which restart(i) holds, whatever the script's own restarts.
var RunWeirRestartingAt = runWeir
