"""Usage metering: the intervals during which a subject held GPUs, CPU and memory (written by the
run lifecycle in the transaction of each status change, `metering.meter`), the prices per GPU-hour,
and the usage reports built from them (`metering.service`, `metering.graphql`)."""
