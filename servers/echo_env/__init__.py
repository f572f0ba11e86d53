"""A test server: shows the process's environment and working directory, and misbehaves on request
(sleeps, huge results, failures, images, crashing) so clients' error handling can be tested."""
