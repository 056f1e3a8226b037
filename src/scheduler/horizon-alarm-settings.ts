/** The horizon alarm's setting (config assembles it). */
export interface HorizonAlarmSettings {
  /**
   * trunk_calls days within this many days of the service's 90-day horizon that are incomplete
   * or unread raise the alarm: the `telesync_horizon_unread_days` gauge and a failing /healthz;
   * 0 turns it off (TELESYNC_HORIZON_ALARM_DAYS, default 7).
   */
  readonly alarmDays: number;
}
