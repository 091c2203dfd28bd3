// Package soju builds what a SojuBouncer runs on: the names of its children, soju's config in the scfg
// format (a small encoder, no text templates), the ConfigMap, the Deployment with the first-admin init
// container, the Secret with the database role's credentials, and the PodMonitor of a bouncer with
// metrics. The Service, Certificate and Route are the shared builders of internal/irc/ircnet; the database
// and role themselves are internal/postgres's.
package soju
