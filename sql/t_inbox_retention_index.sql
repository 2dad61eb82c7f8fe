alter table t_inbox add key idx_consumer_processed_at (consumer, processed_at);
