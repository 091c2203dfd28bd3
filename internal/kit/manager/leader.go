package manager

// LeaderElectionID is the name of the leader election Lease.
const LeaderElectionID = "platform-operator.josie.cloud"
