# tests/lab/load-job.pl GO ROUNDS: one job of tests/lab/t-load.sh. Until
# the file GO is there it naps 0.2 s at a time, working a little between
# naps (each look for GO is a call home while it is away); then ROUNDS
# rounds of arithmetic, 50 ms apart, and prints what they came to, which
# depends on ROUNDS alone.
use strict;
use warnings;
use Time::HiRes qw(sleep);

my ($go, $rounds) = @ARGV;
my $h = 7;
until (-e $go) {
	$h = ($h * 31 + 1) % 1000000007 for 1 .. 200;
	sleep 0.2;
}
$h = 7;
for my $i (1 .. $rounds) {
	$h = ($h * 31 + $i + $_) % 1000000007 for 1 .. 2000;
	sleep 0.05;
}
print "$h\n";
